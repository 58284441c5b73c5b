"""The live page for the person supervising agents (``git alock ui``): a read-only view of
the claims, the holders, the edits and the journal, served on 127.0.0.1 only."""
