"""The pieces of the `ttt-lab` command line below `ttt_lab.cli` (the app): the shared runner and
console, the sub-apps that read the tracking store, and the presentation the commands share (rich
tables of the API's results, the front end that draws events and log lines, the error printer)."""
