// Scaffolding: replaced by the real CLI in the next commits.
int main() { return 1; }
