# Voila's settings that JSON cannot hold (a function); see README.md here. Standard library only: every Jupyter
# server of an environment reads this file (Voila's server extension too), so an import that failed here would stop
# Voila loading at all, and a heavy one would weigh on every participant's server.


def xsrf_first(handler, notebook=None, cwd=None):
    """Before a page's kernel starts: the page's XSRF cookie, set now. Closing or reloading the page asks the server
    to end its kernel with that cookie's token; Voila streams its page, and the cookie had been made only once the
    first part was sent, too late to be set: every such request was refused (403) and each reload left a kernel
    running until the idle cull, a quarter of an hour later."""
    handler.xsrf_token  # noqa: B018 - read for its effect: tornado sets the cookie on its first reading


c.VoilaConfiguration.prelaunch_hook = xsrf_first  # noqa: F821 - `c` is the config Voila hands this file
