declare class C { m(): void; x: number } return typeof C
