public class Checkout
{
    public async Task<bool> Run(IUnleash unleash, FeatureClient client)
    {
        var on = unleash.IsEnabled("new-checkout");
        var variant = unleash.GetVariant(@"checkout-colour");
        return on && await client.GetBooleanValueAsync("dark-mode", false);
    }
}
