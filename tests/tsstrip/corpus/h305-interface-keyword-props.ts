interface I { default: string; new: number; delete(): void; get: number; set?: string; readonly type: 1 } return 1
