interface P { x: number; y?: number; readonly z: string; m(a: number): void; (call: string): number; new (x: number): P; [k: string]: unknown }
return 1
