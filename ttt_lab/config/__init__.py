"""Configuration: the typed schema, Hydra composition, short names for overrides."""
