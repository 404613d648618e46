"""Players: things that answer a batch of conversations with a batch of replies."""
