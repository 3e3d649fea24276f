"""Runs of the original MLAgentBench, imported: its log folders read (:mod:`.layout`,
:mod:`.reader`), turned into run folders of ours with a trace, snapshots and a result row marked
imported (:mod:`.importer`), so that the report, the paper's rule and the regression gate use them
like our own. ``pytest-mlab import`` (cli/importing.py) is the command."""
