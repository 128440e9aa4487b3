#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelweb.settings")
    from django.core.management import execute_from_command_line
    from django.db import DatabaseError

    try:
        execute_from_command_line(sys.argv)
    except DatabaseError as exc:
        from kernelweb.dberrors import explain

        message = explain(exc)
        if message is None:
            raise
        sys.exit(f"error: {message} ({type(exc).__name__}: {exc})")


if __name__ == "__main__":
    main()
