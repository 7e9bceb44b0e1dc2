"""The knowledge base: signature model, loader and field vocabulary (no engine import)."""
