"""The CLI's presentation of the API's data and the domain's events: rich tables, bars and colours.
The only place below the commands that imports rich."""
