"""Plane geometry shared by the graph renderer and the picture checker, so the drawing and its test agree by
construction (plain functions, figure units)."""
from __future__ import annotations

Point = tuple[float, float]
Rect = tuple[float, float, float, float]   # x0, y0, x1, y1


def segment_meets_rect(p: Point, q: Point, r: Rect) -> bool:
    """Whether the segment pq meets the closed rectangle ``r`` (Liang-Barsky clipping).

    A segment that only touches the border, or ends on it, meets it; a point (p == q) meets it when inside.

    Args:
        p, q: the segment's ends.
        r: the rectangle as ``(x0, y0, x1, y1)`` with x0 <= x1 and y0 <= y1.

    Returns:
        True when some point of pq lies in ``r``.
    """
    x0, y0 = p
    dx, dy = q[0] - x0, q[1] - y0
    t0, t1 = 0.0, 1.0   # the part of pq (p + t·(q - p)) still inside every edge seen so far
    for pk, qk in ((-dx, x0 - r[0]), (dx, r[2] - x0), (-dy, y0 - r[1]), (dy, r[3] - y0)):
        if pk == 0:
            if qk < 0:          # parallel to this edge and outside it
                return False
        else:
            t = qk / pk
            if pk < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
            if t0 > t1:
                return False
    return True
