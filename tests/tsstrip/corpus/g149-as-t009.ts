return (7 as "lit" | 'other' | 42 | -1 | true) as any
