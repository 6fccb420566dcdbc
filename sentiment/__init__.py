"""Sentiment classification on SST-2 with GloVe vectors, trained by our engine (HW2's setting).

- :mod:`sentiment.data`: SST-2 loader (validated, optional download), the built-in corpus.
- :mod:`sentiment.embeddings`: GloVe loader, tokenizer, vocabulary / token ids.
- :mod:`sentiment.model`: HW2's network (masked mean -> Linear -> ReLU -> Dropout -> Linear -> sigmoid).
- :mod:`sentiment.trainer`: a trainer that emits events, can be paused and stopped, runs in a thread.
"""
