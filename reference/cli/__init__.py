"""The command line: argument parsing and printing only, on top of every other layer."""
