const async = (x: number) => x * 3; return async(2)
