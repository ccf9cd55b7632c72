"""Vendors' own paths, for clients written against them: Suno-style music, Kling and Vidu
video and audio, Fish Audio speech, Stability images, PicWish's visual and document tools."""
