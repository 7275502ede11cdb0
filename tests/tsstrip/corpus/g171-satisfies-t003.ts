const v = [1, 2] satisfies Map<string, Array<Set<number>>>; return v
