"""Streaming LLM providers (OpenAI Chat Completions, Anthropic Messages) over aiohttp.

One SSE reader and one adapter per provider, each yielding provider-neutral events and racing
the turn's CancellationToken. Built in the providers issue; nothing here yet.
"""
