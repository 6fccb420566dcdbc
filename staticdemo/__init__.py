"""Logic of the "Static vs dynamic" page (static graphs, unrolled loops, folding, capture and replay)."""
