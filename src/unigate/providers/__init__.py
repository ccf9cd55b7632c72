"""Provider adapters: one module per upstream wire protocol, behind `providers.base.Provider`."""
