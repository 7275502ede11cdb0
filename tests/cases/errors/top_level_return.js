if (true) {
  return { answer: 42 };
}
return "unreachable";
