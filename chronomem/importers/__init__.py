"""Importers of other memory servers' files into a chronomem store (through the normal write path)."""
