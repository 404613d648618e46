"""Training: the pipeline (SFT warm-up, whole-game GRPO/CISPO phases with TRL, final
evaluation), checkpoints, and the game loop over a generation backend (imports torch)."""
