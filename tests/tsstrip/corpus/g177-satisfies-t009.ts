const v = [1, 2] satisfies "lit" | 'other' | 42 | -1 | true; return v
