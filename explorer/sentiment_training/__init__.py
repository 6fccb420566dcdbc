"""Sentiment training (page 11): what the page shows (:mod:`.views`) and the training run that feeds it
(:mod:`.runner`). The data, the HW2 network and the trainer are the :mod:`sentiment` library."""
