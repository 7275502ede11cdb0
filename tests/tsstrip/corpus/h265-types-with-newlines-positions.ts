let a:
    number
    = 1;
const f = (
    x: number,
    y?: string,
): number =>
    x;
return [a, f(2)]
