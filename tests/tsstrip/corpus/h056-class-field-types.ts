class A { x: number; y?: string; z!: boolean; w: number = 2 } return Object.entries(new A())
