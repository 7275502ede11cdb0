const v: unknown = 7; return <number><unknown>v
