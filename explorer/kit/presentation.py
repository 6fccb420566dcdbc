"""Lecturer presentation mode: larger fonts and nodes, minimal chrome, readable on a projector."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Look:
    """Sizes every page uses when it draws (figures, tables, buttons)."""
    presenting: bool
    font_px: int          # base text size of the page
    figure_font: int      # text inside Plotly figures
    node_size: int        # marker size of a graph node (px)
    edge_width: float
    figure_height: int    # px
    table_font_px: int
    button_font_px: int

    @property
    def label_chars(self) -> int:
        """How many characters a node label may use before it is shortened."""
        return 10 if self.presenting else 16


NORMAL = Look(False, font_px=16, figure_font=13, node_size=26, edge_width=1.6, figure_height=520,
              table_font_px=14, button_font_px=16)
PRESENTING = Look(True, font_px=24, figure_font=20, node_size=44, edge_width=3.0, figure_height=720,
                  table_font_px=22, button_font_px=30)


def look(presenting: bool) -> Look:
    return PRESENTING if presenting else NORMAL


def css(lk: Look) -> str:
    """A <style> block for st.html: in presentation mode hide Streamlit's chrome and enlarge text."""
    rules = [
        f'[data-testid="stButton"] button {{ font-size: {lk.button_font_px}px; min-height: {lk.button_font_px * 2}px; }}',
        f'[data-testid="stButton"] button p {{ font-size: {lk.button_font_px}px; }}',
    ]
    if lk.presenting:
        rules += [
            f'[data-testid="stAppViewContainer"] {{ font-size: {lk.font_px}px; }}',
            f'[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li '
            f'{{ font-size: {lk.font_px}px; line-height: 1.35; }}',
            f'textarea, input {{ font-size: {lk.font_px}px !important; }}',
            # captions and metrics stayed at their desktop size (14 px captions on a projector)
            f'[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p '
            f'{{ font-size: {round(lk.font_px * 0.8)}px; }}',
            f'[data-testid="stMetricValue"] {{ font-size: {lk.font_px * 2}px; }}',
            f'[data-testid="stMetricLabel"] p {{ font-size: {lk.font_px}px; }}',
            f'[data-testid="stCode"] code {{ font-size: {round(lk.font_px * 0.85)}px; }}',
            f'[data-testid="stMarkdownContainer"] h5 {{ font-size: {round(lk.font_px * 1.1)}px; }}',
            f'[data-testid="stTable"] td, [data-testid="stTable"] th {{ font-size: {lk.table_font_px}px; }}',
            '[data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"], '
            '[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], footer '
            '{ display: none !important; }',
            '.block-container, [data-testid="stMainBlockContainer"] '
            '{ padding-top: 1rem !important; max-width: 100% !important; }',
        ]
    return "<style>\n" + "\n".join(rules) + "\n</style>"
