function f(x: number): number;
function f(x: string): string;
function f(x: any): any { return x }
return [f(1), f("a")]
