return (7 as `prefix-${string}`) as any
