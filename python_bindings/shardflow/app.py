"""TF1's tf.app: ``run(main)`` parses the command-line flags and calls main(argv), and
``flags`` (shardflow.flags, also sf.flags).

Example::

    sf.app.flags.DEFINE_integer("steps", 1000, "Training steps.")
    FLAGS = sf.app.flags.FLAGS

    def main(argv):
        train(FLAGS.steps)

    if __name__ == "__main__":
        sf.app.run()          # or sf.app.run(main=main, argv=[...])
"""

import sys

from shardflow import flags  # noqa: F401 (sf.app.flags)


def run(main=None, argv=None):
    """Parses the defined flags from `argv` (default sys.argv; flags not defined are left for
    main), then calls main(remaining argv) — `main` defaults to the main() of the __main__
    module — and exits with what it returns (None: 0), as TF1's tf.app.run. ``--help``
    prints the flags and exits 0."""
    args = list(sys.argv if argv is None else argv)
    if main is None:
        main = getattr(sys.modules.get("__main__"), "main", None)
        if main is None:
            raise ValueError("app.run: give main= (the __main__ module has no main function)")
    if not callable(main):
        raise TypeError("app.run: main must be a function of argv, not %r" % (main,))
    before_dashes = args[1:args.index("--")] if "--" in args[1:] else args[1:]
    if any(a in ("--help", "-help", "--helpfull", "--helpshort", "-?") for a in before_dashes):
        print("%s:\n%s" % (args[0] if args else "program", flags.FLAGS.usage()))
        sys.exit(0)
    remaining = flags.FLAGS(args, known_only=True)
    sys.exit(main(remaining))


__all__ = ["flags", "run"]
