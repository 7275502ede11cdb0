let { a = 1 as number } = {} as { a?: number }; return a
