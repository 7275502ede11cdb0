const v: unknown = 1; return (v as number) > 0 ? "pos" : "neg"
