function f<T extends (...args: any[]) => any>(fn: T): ReturnType<T> { return fn() } return f(() => 4)
