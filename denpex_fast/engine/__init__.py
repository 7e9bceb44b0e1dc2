"""The Hyperscan engine: the C boundary, the scanner and its database cache."""
