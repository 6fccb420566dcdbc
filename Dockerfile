# Autodiff Explorer: one Streamlit server (one replica). Several replicas behind a sticky proxy: compose.yaml.
#
#   docker build -t autodiff-explorer .
#   docker run --rm -p 8501:8501 autodiff-explorer          # http://localhost:8501
#
# Streamlit keeps each browser session's state (and its training run) inside one server process, so a
# replica is one process; scale out with replicas, never with several processes behind one port.
FROM python:3.11-slim-bookworm

# Graphviz's `dot`: graph layout and the SVG downloads
RUN apt-get update \
    && apt-get install -y --no-install-recommends graphviz \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # training processes at once per replica (the pool queues the rest; see explorer/sentiment_training/runner.py)
    AUTODIFF_TRAINING_WORKERS=2 \
    # a training run is stopped after this many seconds
    AUTODIFF_TRAINING_MAX_S=3600 \
    # a class server: the Your HW2 code page never runs students' files here (whatever the command line says)
    AUTODIFF_CLASS_SERVER=1

WORKDIR /app
# the runtime dependencies first (their layer survives code changes); the test tools are left out
COPY requirements.txt pyproject.toml README.md ./
RUN sed -n '/^# tests/q;/^[a-zA-Z]/p' requirements.txt > requirements-runtime.txt \
    && pip install -r requirements-runtime.txt
COPY engine ./engine
COPY explorer ./explorer
COPY sentiment ./sentiment
COPY app ./app
COPY .streamlit ./.streamlit
RUN pip install --no-deps . \
    && useradd --create-home --uid 10001 explorer
USER explorer

EXPOSE 8501
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"

# .streamlit/config.toml (read from the working directory) keeps tracebacks out of the browser
CMD ["streamlit", "run", "app/Home.py", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true"]
