"""Name-based answer fairness for chat models: is 佐藤花子 answered as 佐藤太郎 is, for the same request?"""
