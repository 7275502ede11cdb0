const c = false; return c ? 1 as number : "s" as string
