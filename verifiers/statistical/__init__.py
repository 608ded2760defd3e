"""The statistical audit: batch and sequential certification, pair search, draws and their parallel engine."""
