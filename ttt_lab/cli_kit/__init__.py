"""The pieces of the `ttt-lab` command line below `ttt_lab.cli` (the app): the shared runner and
console, and the sub-apps that read the tracking store."""
