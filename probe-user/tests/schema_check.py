"""Validates JSON documents against a JSON Schema (draft 2020-12) with
the PyPI `jsonschema` package, an implementation independent of the Rust
that generated the schema. Prints one line per error (the document, the
path in it, the message) and exits 1 on any; prints how many documents
it checked and exits 0 otherwise. Used by vmtrace's tests to check its
--json output against `vmtrace generate schema`.
Usage: schema_check.py SCHEMA.json DOC.json..."""

import json
import sys

from jsonschema import Draft202012Validator


def main(schema_path, docs):
    with open(schema_path) as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    errors = 0
    for path in docs:
        with open(path) as f:
            doc = json.load(f)
        for e in validator.iter_errors(doc):
            where = "/".join(str(p) for p in e.absolute_path)
            print(f"{path}: /{where}: {e.message}"[:400])
            errors += 1
    if errors:
        sys.exit(1)
    print(f"{len(docs)} valid")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
