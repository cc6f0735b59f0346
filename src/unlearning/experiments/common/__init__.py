"""What several experiments share and no shared layer should know: reading and writing their run files."""
