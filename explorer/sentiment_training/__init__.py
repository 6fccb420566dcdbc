"""Sentiment training (page 6): what the page shows (:mod:`.views`) and the training run that feeds it
(:mod:`.runner`). The data, the HW2 network and the trainer are the :mod:`sentiment` library."""
