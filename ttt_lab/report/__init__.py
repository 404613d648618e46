"""Study reports: runs from the tracking store -> tables, curves, stability flags, HTML/Markdown."""
