"""Plane geometry shared by the graph renderer and the picture checker, so the drawing and its test agree by
construction (plain functions, figure units)."""
from __future__ import annotations

import math

Point = tuple[float, float]
Rect = tuple[float, float, float, float]   # x0, y0, x1, y1


def clip_segment(p: Point, q: Point, r: Rect) -> tuple[Point, Point] | None:
    """The part of the segment pq inside the closed rectangle ``r = (x0, y0, x1, y1)`` (Liang-Barsky clipping),
    None when the segment misses it. A segment that only touches the border keeps that point; a point (p == q)
    is kept when inside."""
    x0, y0 = float(p[0]), float(p[1])
    dx, dy = float(q[0]) - x0, float(q[1]) - y0
    t0, t1 = 0.0, 1.0   # the part of pq (p + t·(q - p)) still inside every edge seen so far
    for pk, qk in ((-dx, x0 - r[0]), (dx, r[2] - x0), (-dy, y0 - r[1]), (dy, r[3] - y0)):
        if pk == 0:
            if qk < 0:          # parallel to this edge and outside it
                return None
        else:
            t = qk / pk
            if pk < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
            if t0 > t1:
                return None
    return (x0 + t0 * dx, y0 + t0 * dy), (x0 + t1 * dx, y0 + t1 * dy)


def segment_meets_rect(p: Point, q: Point, r: Rect) -> bool:
    """Whether the segment pq meets the closed rectangle ``r = (x0, y0, x1, y1)`` (:func:`clip_segment` keeps a
    part of it): touching the border, or ending on it, counts."""
    return clip_segment(p, q, r) is not None


def _point_segment_distance(pt: Point, p: Point, q: Point) -> float:
    dx, dy = q[0] - p[0], q[1] - p[1]
    d2 = dx * dx + dy * dy
    t = 0.0 if d2 == 0 else max(0.0, min(1.0, ((pt[0] - p[0]) * dx + (pt[1] - p[1]) * dy) / d2))
    return math.hypot(pt[0] - p[0] - t * dx, pt[1] - p[1] - t * dy)


def polyline_rect_distance(poly: list[Point], r: Rect) -> float:
    """The gap between the polyline ``poly`` and the rectangle ``r`` (0 where they meet): how far a label in ``r``
    sits from an edge drawn as ``poly``.

    Args:
        poly: the polyline's points (one point: a point).
        r: the rectangle as ``(x0, y0, x1, y1)`` with x0 <= x1 and y0 <= y1.

    Returns:
        The smallest distance between a point of ``poly`` and a point of ``r``.
    """
    corners = ((r[0], r[1]), (r[2], r[1]), (r[2], r[3]), (r[0], r[3]))
    sides = list(zip(corners, corners[1:] + corners[:1]))
    best = math.inf
    for p, q in zip(poly, poly[1:]) if len(poly) > 1 else [(poly[0], poly[0])]:
        if segment_meets_rect(p, q, r):
            return 0.0
        # apart: the gap is between an end of one and the other (a segment's end to a side, a corner to the segment)
        best = min(best, *(_point_segment_distance(c, p, q) for c in corners),
                   *(_point_segment_distance(e, a, b) for e in (p, q) for a, b in sides))
    return best
