declare const x: number; declare let y: string; return typeof x
