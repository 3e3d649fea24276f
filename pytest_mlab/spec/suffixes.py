"""Which files are specs: its own module, so that pytest's file hook can ask without loading the
spec machinery for every file of a test suite."""

SPEC_SUFFIXES = (".yaml", ".yml")
