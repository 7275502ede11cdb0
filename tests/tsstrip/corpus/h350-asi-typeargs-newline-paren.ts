function f<T>(x?: T) { return (y: any) => "called" } const r = f<number>
(1)
return typeof r
