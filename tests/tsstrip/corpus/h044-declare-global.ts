declare global { interface Window { q: number } var gg: string }
return 1
