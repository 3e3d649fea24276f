"""Runs placed on a cluster by an existing engine (``--mlab-ray``): each item's run executes on the
node Ray picks for the resources its task declares, and its run folder comes back to the
controller's results folder. Ray is imported only by a session that asks for it."""
