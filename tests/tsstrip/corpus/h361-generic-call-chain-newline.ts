const arr = [1, 2, 3]
    .map<number>((x) => x * 2)
    .filter((x: number): boolean => x > 2)
return arr
