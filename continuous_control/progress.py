"""What a training run shows while it runs: `tqdm.auto`'s progress bar and one live learning curve, each
redrawn in place through a display handle (so printed log lines stay) whose last state is saved as text or
PNG for pages where no kernel runs (GitHub, nbviewer, `nbconvert --to html`).
"""

from IPython.display import display
from tqdm.auto import tqdm


class Progress:
    """tqdm.auto's bar over episodes that ends at the episode where the run stopped."""

    def __init__(self, total: int, initial: int, live: bool):
        notebook = live and any(c.__module__ == "tqdm.notebook" for c in tqdm.__mro__)  # the widget bar
        kwargs = {"display": False} if notebook else {"disable": not live}
        self.bar = tqdm(total=total, initial=initial, desc="episodes", unit="episode", **kwargs)
        self.handle = display(self.bar.container, display_id=True) if notebook else None

    def update(self, **scores) -> None:
        self.bar.set_postfix(scores, refresh=False)
        self.bar.update(1)

    def close(self, episode: int) -> None:
        self.bar.total = episode  # stopped early because solved: still full
        if self.handle:
            self.bar.container.children[1].max = episode
        self.bar.close()
        if self.handle:
            self.handle.update(self.bar.container)  # its saved text form now reads episode/episode


class LiveCurve:
    """One learning-curve figure, redrawn in place (`draw(history)`), or nothing when not live."""

    def __init__(self, live: bool):
        self.live = live
        if live:
            import matplotlib.pyplot as plt

            self.fig, self.ax = plt.subplots(figsize=(9, 4.5))
            self.handle = display(self.fig, display_id=True)

    def draw(self, history: dict) -> None:
        if self.live:
            from .figures import plot_scores

            plot_scores(history, self.ax)
            self.handle.update(self.fig)

    def close(self, history: dict) -> None:
        if self.live:
            import matplotlib.pyplot as plt

            self.draw(history)
            plt.close(self.fig)
