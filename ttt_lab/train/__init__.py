"""Training: SFT warm-up and whole-game GRPO/CISPO phases with TRL (imports torch)."""
