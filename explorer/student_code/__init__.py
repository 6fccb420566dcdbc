"""Page 13 (Your HW2 code): a student's ``topological_sort`` / ``backpropagate`` run on the engine's graphs.

- :mod:`.graphs`    the graphs (engine only), the same in the sandbox and in the app
- :mod:`.child`     the sandbox process (never imported by the app): limits, loading, recording proxies
- :mod:`.runner`    starts the child and reads back its plain-data records
- :mod:`.diagnose`  the engine's reference and one verdict per graph
- :mod:`.report`    every verdict together, and the text ``python -m explorer.student_code PATH`` prints
- :mod:`.view`      the page's model: the opt-in, both orders as frames, the first wrong node marked
- :mod:`.samples`   the project's own solutions (one correct, five broken) the page runs when no student's file
                    does, on a class server too; read as files, never imported

Nothing is imported here, so that the child process starts with the engine alone.
"""
