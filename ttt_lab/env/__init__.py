"""The environment: prompts, the move parser, one multi-turn episode, the rubric, datasets
and their strata, and a batch driver that plays players against opponents. Imports only
`game` and the standard library."""
